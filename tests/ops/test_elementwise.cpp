// Elementwise op kernels on hand-computed cases.
#include "ops/op_test_util.h"

namespace tessera::testing {

TEST(Elementwise, AddBroadcasts) {
  auto out = run_op({.op = "Add", .inputs = {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({3}, {10, 20, 30})}});
  expect_near(out[0], f32({2, 3}, {11, 22, 33, 14, 25, 36}));
}

TEST(Elementwise, ReluClampsNegatives) {
  auto out = run_op({.op = "Relu", .inputs = {f32({4}, {-1, 0, 2, -3})}});
  expect_near(out[0], f32({4}, {0, 0, 2, 0}));
}

}  // namespace tessera::testing
