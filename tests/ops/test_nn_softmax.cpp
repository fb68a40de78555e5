// Softmax, LogSoftmax, Hardmax (both axis conventions) and Dropout.
#include <cmath>

#include "ops/op_test_util.h"
#include "support/error.h"

namespace tessera::testing {

TEST(NnSoftmax, SoftmaxRow) {
  auto out = run_op({.op = "Softmax", .inputs = {f32({1, 3}, {1, 2, 3})}});
  expect_near(out[0], f32({1, 3}, {0.09003057f, 0.24472847f, 0.66524096f}));
}

TEST(NnSoftmax, AxisSemanticsChangeAtOpset13) {
  Tensor x = f32({2, 2}, {0, 0, 0, 0});
  AttrMap axis0{{"axis", Attribute::of_int(0)}};
  // Opset 11: coerced to 2-D at axis 0, i.e. one row of four.
  expect_near(run_op({.op = "Softmax", .inputs = {x}, .attrs = axis0, .opset = 11})[0],
              f32({2, 2}, {0.25f, 0.25f, 0.25f, 0.25f}));
  // Opset 13: along axis 0 only.
  expect_near(run_op({.op = "Softmax", .inputs = {x}, .attrs = axis0, .opset = 13})[0],
              f32({2, 2}, {0.5f, 0.5f, 0.5f, 0.5f}));
  // Opset 11 default axis is 1: rows of the [2, 2x...] flattening.
  expect_near(run_op({.op = "Softmax", .inputs = {f32({1, 2, 2}, {0, 0, 0, 0})}, .opset = 11})[0],
              f32({1, 2, 2}, {0.25f, 0.25f, 0.25f, 0.25f}));
}

TEST(NnSoftmax, LogSoftmaxAndHardmax) {
  const float l2 = -std::log(2.0f);
  expect_near(run_op({.op = "LogSoftmax", .inputs = {f32({2}, {5, 5})}})[0], f32({2}, {l2, l2}));
  expect_near(run_op({.op = "Hardmax", .inputs = {f32({2, 3}, {1, 3, 3, 2, 1, 0})}})[0],
              f32({2, 3}, {0, 1, 0, 1, 0, 0}));
  expect_near(run_op({.op = "Hardmax", .inputs = {f32({2, 2}, {1, 4, 3, 2})}, .attrs = {{"axis", Attribute::of_int(0)}}})[0],
              f32({2, 2}, {0, 1, 1, 0}));
  EXPECT_THROW(run_op({.op = "Softmax", .inputs = {i64({2}, {1, 2})}}), Error);
  EXPECT_THROW(run_op({.op = "Softmax", .inputs = {f32({2}, {1, 2})}, .attrs = {{"axis", Attribute::of_int(1)}}}), Error);
}

TEST(NnDropout, InferenceIsIdentityWithTrueMask) {
  Tensor x = f32({3}, {1, -2, 3});
  auto out = run_op({.op = "Dropout", .inputs = {x}, .num_outputs = 2});
  expect_near(out[0], x);
  EXPECT_EQ(out[1].dtype(), DType::Bool);
  EXPECT_EQ(out[1].to_int_vector(), (std::vector<int64_t>{1, 1, 1}));
  auto off = run_op({.op = "Dropout", .inputs = {x, f32({}, {0.5f}), Tensor::from<bool>({}, {false})}, .num_outputs = 2});
  expect_near(off[0], x);
}

TEST(NnDropout, TrainingScalesSurvivors) {
  std::vector<float> v(64, 1.0f);
  auto out = run_op({.op = "Dropout", .inputs = {f32({64}, v), f32({}, {0.75f}), Tensor::from<bool>({}, {true})},
                     .num_outputs = 2});
  int kept = 0;
  for (int64_t i = 0; i < 64; ++i) {
    const double y = out[0].get_double(i);
    EXPECT_TRUE(y == 0.0 || y == 4.0) << y;
    EXPECT_EQ(out[1].get_int(i) != 0, y == 4.0);
    kept += y == 4.0;
  }
  EXPECT_GT(kept, 0);
  EXPECT_LT(kept, 64);
  EXPECT_THROW(run_op({.op = "Dropout", .inputs = {f32({1}, {1}), f32({}, {1.5f})}}), Error);
}

}  // namespace tessera::testing
