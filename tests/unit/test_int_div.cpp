// Rounding integer division (src/support/int_div.h): floor_div and ceil_div
// against the definition of floor and ceiling, checked in 128-bit arithmetic,
// for every sign of dividend and divisor and near the ends of int64; round_up
// and round_down against the definitions of the least multiple not below and
// the greatest not above.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "support/int_div.h"

namespace tessera {
namespace {

using Wide = __int128;

// Both are constexpr; rounding is toward minus and plus infinity, not zero.
static_assert(floor_div(-7, 2) == -4 && ceil_div(-7, 2) == -3 && floor_div(7, -2) == -4);

// q is floor(a / b): q*b <= a < (q+1)*b for b > 0, mirrored for b < 0.
bool is_floor(int64_t a, int64_t b, int64_t q) {
  const Wide lo = Wide(q) * b, next = (Wide(q) + 1) * b;
  return b > 0 ? (lo <= a && a < next) : (next < a && a <= lo);
}
// q is ceil(a / b): (q-1)*b < a <= q*b for b > 0, mirrored for b < 0.
bool is_ceil(int64_t a, int64_t b, int64_t q) {
  const Wide hi = Wide(q) * b, prev = (Wide(q) - 1) * b;
  return b > 0 ? (prev < a && a <= hi) : (hi <= a && a < prev);
}

TEST(IntDiv, FloorAndCeilOfSmallValuesOfEverySign) {
  for (int64_t a = -40; a <= 40; ++a) {
    for (int64_t b = -9; b <= 9; ++b) {
      if (b == 0) continue;
      EXPECT_TRUE(is_floor(a, b, floor_div(a, b))) << a << " / " << b << " -> " << floor_div(a, b);
      EXPECT_TRUE(is_ceil(a, b, ceil_div(a, b))) << a << " / " << b << " -> " << ceil_div(a, b);
    }
  }
}

TEST(IntDiv, ValuesNearTheEndsOfInt64) {
  const int64_t big = std::numeric_limits<int64_t>::max();
  const std::vector<int64_t> dividends = {big, big - 1, -big, -big + 1, big / 2, -(big / 2) - 1};
  for (int64_t a : dividends) {
    for (int64_t b : {int64_t{2}, int64_t{3}, int64_t{-7}, big, -big, int64_t{1} << 40}) {
      EXPECT_TRUE(is_floor(a, b, floor_div(a, b))) << a << " / " << b;
      EXPECT_TRUE(is_ceil(a, b, ceil_div(a, b))) << a << " / " << b;
    }
  }
}

// r is the least multiple of m (m > 0) not below x: a multiple, at or above
// x, and less than m above it.
template <class T>
bool is_round_up(T x, T m, T r) {
  return r % m == 0 && r >= x && r - x < m;
}

static_assert(round_up(int64_t{-7}, 4) == -4 && round_up(int64_t{8}, 4) == 8 && round_up(size_t{9}, 4) == 12);

TEST(IntDiv, RoundUpOfSignedAndUnsignedValues) {
  for (int64_t x = -40; x <= 40; ++x)
    for (int64_t m = 1; m <= 9; ++m)
      EXPECT_TRUE(is_round_up(x, m, round_up(x, m))) << x << " up to a multiple of " << m << " -> " << round_up(x, m);
  for (size_t x = 0; x <= 100; ++x)
    for (size_t m : {size_t{1}, size_t{3}, size_t{64}, size_t{4096}})
      EXPECT_TRUE(is_round_up(x, m, round_up(x, m))) << x << " up to a multiple of " << m << " -> " << round_up(x, m);
  // Near the ends of int64 (big - 7 and -big + 7 are multiples of 8).
  const int64_t big = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(round_up(big - 7, 8), big - 7);
  EXPECT_EQ(round_up(-big, 8), -big + 7);
  EXPECT_EQ(round_up(-big + 1, big), 0);
}

// r is the greatest multiple of m (m > 0) not above x: a multiple, at or
// below x, and less than m below it.
template <class T>
bool is_round_down(T x, T m, T r) {
  return r % m == 0 && r <= x && x - r < m;
}

static_assert(round_down(int64_t{-7}, 4) == -8 && round_down(int64_t{8}, 4) == 8 && round_down(size_t{9}, 4) == 8);

TEST(IntDiv, RoundDownOfSignedAndUnsignedValues) {
  for (int64_t x = -40; x <= 40; ++x)
    for (int64_t m = 1; m <= 9; ++m)
      EXPECT_TRUE(is_round_down(x, m, round_down(x, m))) << x << " down to a multiple of " << m << " -> "
                                                         << round_down(x, m);
  for (size_t x = 0; x <= 100; ++x)
    for (size_t m : {size_t{1}, size_t{3}, size_t{64}, size_t{4096}})
      EXPECT_TRUE(is_round_down(x, m, round_down(x, m))) << x << " down to a multiple of " << m << " -> "
                                                         << round_down(x, m);
  // Near the ends of int64 (big - 7 and -big - 1 are multiples of 8).
  const int64_t big = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(round_down(big, 8), big - 7);
  EXPECT_EQ(round_down(-big, 8), -big - 1);
  EXPECT_EQ(round_down(big - 1, big), 0);
}

}  // namespace
}  // namespace tessera
