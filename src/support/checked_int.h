// Integer parsing and arithmetic for untrusted input (model files, external
// data offsets, .npy headers, artifacts, command lines): a malformed or
// out-of-range number, or a product or sum that would overflow, is reported
// instead of throwing std::stoll's bare "stoll" or wrapping around silently.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string_view>

namespace tessera {

// The decimal integer that is all of `s` (an optional '-' then digits), or
// nullopt when `s` is empty, has other characters or does not fit in 64 bits.
inline std::optional<int64_t> parse_int64(std::string_view s) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// a * b and a + b, or nullopt when the result does not fit in 64 bits.
inline std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}
inline std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

}  // namespace tessera
