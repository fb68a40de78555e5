// Compiled kernels against the reference interpreter: one node is compiled
// (tensor expression -> default schedule -> loop IR), run by the loop
// evaluator and by the JIT on every ISA the host has (AVX-512, AVX2), and
// each output compared with the reference kernel's.
#pragma once

#include <random>

#include "ops/op_test_util.h"

namespace tessera::testing {

struct Tolerance {
  double rtol = 1e-5, atol = 1e-6;
};

// Inputs listed in c.constant_inputs are known values at compile time. Adds
// a failure naming the case, the ISA and the first differing elements.
void expect_compiled_matches(const OpCase& c, Tolerance tol = {});

// Seeded random tensor: floats uniform in [lo, hi], integers in [lo, hi], bools 0/1.
Tensor random_tensor(DType d, const Dims& dims, std::mt19937& rng, double lo = -3, double hi = 3);
// A tensor of garbage (NaN for floats, 0x5a bytes otherwise) for a kernel's
// scratch buffers, whose contents on entry must not matter.
Tensor garbage_tensor(DType d, const Dims& dims);
// Random dims of the given rank, each in [1, max_dim].
Dims random_dims(int rank, std::mt19937& rng, int64_t max_dim = 6);

}  // namespace tessera::testing
