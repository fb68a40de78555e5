// Exact arithmetic in the prime field Z_p, p = 2^31 - 1 (a Mersenne prime).
// PET's verifier evaluates multi-linear programs over this field on random
// inputs (Theorem 2, Schwartz-Zippel): every sum and product is exact, so two
// programs that differ as polynomials agree on a random input with
// probability at most (number of inputs) / p. Elements are uint32 in [0, p);
// 0xFFFFFFFF is never an element, so callers may use it as "not computed".
#pragma once

#include <cstdint>

namespace tessera::pet::field {

inline constexpr uint32_t kP = 2147483647u;   // 2^31 - 1
inline constexpr uint32_t kNone = 0xFFFFFFFFu;  // not an element: a memo's "unset"

// Any 64-bit value reduced mod p. Because 2^31 = 1 (mod p), x = hi*2^31 + lo
// reduces to hi + lo; two folds bring any 64-bit value below 2^32, and one
// conditional subtraction below p.
constexpr uint32_t reduce(uint64_t x) {
  x = (x & kP) + (x >> 31);  // < 2^33 + 2^31
  x = (x & kP) + (x >> 31);  // < 2^31 + 4
  return static_cast<uint32_t>(x >= kP ? x - kP : x);
}

constexpr uint32_t add(uint32_t a, uint32_t b) {
  const uint32_t s = a + b;  // < 2^32: both below 2^31
  return s >= kP ? s - kP : s;
}

constexpr uint32_t sub(uint32_t a, uint32_t b) { return a >= b ? a - b : a + (kP - b); }

constexpr uint32_t neg(uint32_t a) { return a == 0 ? 0 : kP - a; }

constexpr uint32_t mul(uint32_t a, uint32_t b) { return reduce(static_cast<uint64_t>(a) * b); }

constexpr uint32_t pow(uint32_t a, uint64_t e) {
  uint32_t r = 1;
  while (e) {
    if (e & 1) r = mul(r, a);
    a = mul(a, a);
    e >>= 1;
  }
  return r;
}

// The multiplicative inverse by Fermat (a^(p-2)); 0 has none and gives 0, so
// callers that divide check for a zero divisor first.
constexpr uint32_t inv(uint32_t a) { return pow(a, kP - 2); }

// A signed integer as a field element (negative values wrap: -1 -> p - 1).
constexpr uint32_t from_int(int64_t v) {
  const int64_t r = v % static_cast<int64_t>(kP);  // in (-p, p)
  return static_cast<uint32_t>(r < 0 ? r + static_cast<int64_t>(kP) : r);
}

// The representative in (-p/2, p/2], for printing and tests.
constexpr int64_t to_signed(uint32_t a) {
  return a > kP / 2 ? static_cast<int64_t>(a) - static_cast<int64_t>(kP) : static_cast<int64_t>(a);
}

// A 64-bit mix (splitmix64's finalizer): consecutive inputs give unrelated outputs.
constexpr uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// A pseudo-random field element determined by (seed, stream, index): the
// verifier's random inputs, drawn lazily so only the elements a position
// reads are ever made. Bias from reducing 64 bits mod p is below 2^-32.
// The per-(seed, stream) key, so a caller drawing many elements mixes once.
constexpr uint64_t stream_key(uint64_t seed, uint64_t stream) { return mix64(seed ^ (stream * 0xD1B54A32D192ED03ull)); }
constexpr uint32_t random_element_of_key(uint64_t key, uint64_t index) { return reduce(mix64(key + index) >> 1); }
constexpr uint32_t random_element(uint64_t seed, uint64_t stream, uint64_t index) {
  return random_element_of_key(stream_key(seed, stream), index);
}

}  // namespace tessera::pet::field
