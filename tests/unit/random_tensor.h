// Seeded random float tensors for tests: elements uniform in [lo, hi) drawn
// from std::mt19937(seed) in flat order, so a (dims, seed) pair always gives
// the same tensor.
#pragma once

#include <cstdint>
#include <random>

#include "tessera/tensor.h"

namespace tessera::testing {

inline Tensor random_f32(const Dims& dims, uint32_t seed, float lo = -2, float hi = 2) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  Tensor t(DType::F32, dims);
  for (float& v : t.span<float>()) v = u(rng);
  return t;
}

}  // namespace tessera::testing
