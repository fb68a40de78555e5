// Elementwise ops compiled and checked against the reference on random shapes.
#include "ops/compiled_test_util.h"

namespace tessera::testing {
namespace {

TEST(CompiledElementwise, BinaryWithBroadcast) {
  std::mt19937 rng(42);
  for (const char* op : {"Add", "Sub", "Mul"})
    for (int rep = 0; rep < 6; ++rep) {
      Dims a = random_dims(1 + rep % 4, rng, 20);
      Dims b = a;
      for (auto& d : b)
        if (rng() % 3 == 0) d = 1;
      if (rep % 2) b.erase(b.begin());
      expect_compiled_matches({op, {random_tensor(DType::F32, a, rng), random_tensor(DType::F32, b, rng)}});
    }
}

TEST(CompiledElementwise, Unary) {
  std::mt19937 rng(7);
  for (const char* op : {"Relu", "Exp", "Tanh", "Sigmoid"})
    for (int rep = 0; rep < 4; ++rep)
      expect_compiled_matches({op, {random_tensor(DType::F32, random_dims(1 + rep, rng, 40), rng)}}, {1e-5, 1e-6});
}

}  // namespace
}  // namespace tessera::testing
