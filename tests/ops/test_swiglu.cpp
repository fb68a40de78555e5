// SwiGLU on hand-computed values: sigmoid(ln 3) = 3/4, sigmoid(-ln 3) = 1/4.
#include <cmath>

#include "ops/op_test_util.h"
#include "support/error.h"

namespace tessera::testing {

namespace {
const float kLn3 = std::log(3.0f);
}  // namespace

TEST(SwiGLU, SwishGateTimesValue) {
  // y = a * sigmoid(a) * b: a = 0 -> 0; a = ln3 -> 0.75 ln3 * b; a = -ln3 -> -0.25 ln3 * b.
  auto y = run_op({.op = "SwiGLU", .inputs = {f32({1, 3}, {0, kLn3, -kLn3}), f32({1, 3}, {5, 2, 4})}, .opset = 28});
  expect_near(y[0], f32({1, 3}, {0, 1.5f * kLn3, -kLn3}));
}

TEST(SwiGLU, AlphaScalesTheSigmoidArgument) {
  // alpha = 0.5, a = 2 ln3: sigmoid(ln3) = 3/4 -> y = 1.5 ln3 * b.
  auto y = run_op({.op = "SwiGLU",
                   .inputs = {f32({2}, {2 * kLn3, 0}), f32({2}, {2, 7})},
                   .attrs = {{"alpha", Attribute::of_float(0.5f)}},
                   .opset = 28});
  expect_near(y[0], f32({2}, {3 * kLn3, 0}));
}

TEST(SwiGLU, HalfAndDouble) {
  auto h = run_op({.op = "SwiGLU",
                   .inputs = {Tensor::from<Half>({1}, {Half(0.0f)}), Tensor::from<Half>({1}, {Half(3.0f)})},
                   .opset = 28});
  ASSERT_EQ(h[0].dtype(), DType::F16);
  EXPECT_EQ(static_cast<float>(h[0].data<Half>()[0]), 0.0f);
  auto d = run_op({.op = "SwiGLU",
                   .inputs = {Tensor::from<double>({1}, {std::log(3.0)}), Tensor::from<double>({1}, {4.0})},
                   .opset = 28});
  EXPECT_NEAR(d[0].data<double>()[0], 3.0 * std::log(3.0), 1e-12);
}

TEST(SwiGLU, Errors) {
  // No broadcasting: shapes must match.
  EXPECT_THROW(run_op({.op = "SwiGLU", .inputs = {f32({2}, {1, 2}), f32({1}, {1})}, .opset = 28}), tessera::Error);
  EXPECT_THROW(run_op({.op = "SwiGLU", .inputs = {i64({1}, {1}), i64({1}, {1})}, .opset = 28}), tessera::Error);
  EXPECT_THROW(run_op({.op = "SwiGLU", .inputs = {f32({1}, {1}), f32({1}, {1})}, .opset = 27}), tessera::Error);
}

}  // namespace tessera::testing
