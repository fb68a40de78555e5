// Normalization ops on hand-computed cases: BatchNormalization,
// InstanceNormalization, GroupNormalization, LayerNormalization,
// RMSNormalization, LRN, MeanVarianceNormalization, LpNormalization.
#include <cmath>

#include "ops/op_test_util.h"
#include "support/error.h"

namespace tessera::testing {

TEST(NnNorm, BatchNormInference) {
  Tensor x = f32({1, 2, 1, 2}, {1, 3, 2, 4});
  auto out = run_op({.op = "BatchNormalization",
                     .inputs = {x, f32({2}, {1, 2}), f32({2}, {0, 1}), f32({2}, {2, 3}), f32({2}, {1, 4})},
                     .attrs = {{"epsilon", Attribute::of_float(0)}}});
  expect_near(out[0], f32({1, 2, 1, 2}, {-1, 1, 0, 2}));
}

TEST(NnNorm, BatchNormTrainingUpdatesRunningStats) {
  auto out = run_op({.op = "BatchNormalization",
                     .inputs = {f32({2, 1}, {1, 3}), f32({1}, {1}), f32({1}, {0}), f32({1}, {0}), f32({1}, {1})},
                     .attrs = {{"epsilon", Attribute::of_float(0)}, {"training_mode", Attribute::of_int(1)}},
                     .num_outputs = 3,
                     .opset = 15});
  expect_near(out[0], f32({2, 1}, {-1, 1}));
  expect_near(out[1], f32({1}, {0.2f}));  // 0 * 0.9 + 2 * 0.1
  expect_near(out[2], f32({1}, {1.0f}));  // 1 * 0.9 + 1 * 0.1
}

TEST(NnNorm, InstanceAndGroupNorm) {
  auto inst = run_op({.op = "InstanceNormalization", .inputs = {f32({1, 1, 2}, {1, 3}), f32({1}, {2}), f32({1}, {1})},
                      .attrs = {{"epsilon", Attribute::of_float(0)}}});
  expect_near(inst[0], f32({1, 1, 2}, {-1, 3}));
  auto grp = run_op({.op = "GroupNormalization",
                     .inputs = {f32({1, 4, 1}, {1, 3, 10, 20}), f32({4}, {1, 1, 2, 2}), f32({4}, {0, 0, 0, 1})},
                     .attrs = {{"epsilon", Attribute::of_float(0)}, {"num_groups", Attribute::of_int(2)}},
                     .opset = 21});
  expect_near(grp[0], f32({1, 4, 1}, {-1, 1, -2, 3}));
  EXPECT_THROW(run_op({.op = "GroupNormalization",
                       .inputs = {f32({1, 3, 1}, {1, 2, 3}), f32({3}, {1, 1, 1}), f32({3}, {0, 0, 0})},
                       .attrs = {{"num_groups", Attribute::of_int(2)}}, .opset = 21}),
               Error);
}

TEST(NnNorm, LayerNormWithStatistics) {
  auto out = run_op({.op = "LayerNormalization", .inputs = {f32({2, 2}, {1, 3, 2, 2}), f32({2}, {1, 2}), f32({2}, {0, 1})},
                     .num_outputs = 3});
  const double inv = 1 / std::sqrt(1.00001);
  expect_near(out[0], f32({2, 2}, {static_cast<float>(-inv), static_cast<float>(2 * inv + 1), 0, 1}), 1e-5);
  expect_near(out[1], f32({2, 1}, {2, 2}));
  expect_near(out[2], f32({2, 1}, {static_cast<float>(inv), static_cast<float>(1 / std::sqrt(1e-5))}), 1e-5);
  auto axis0 = run_op({.op = "LayerNormalization", .inputs = {f32({2, 1}, {1, 3}), f32({2, 1}, {1, 1})},
                       .attrs = {{"axis", Attribute::of_int(0)}, {"epsilon", Attribute::of_float(0)}}});
  expect_near(axis0[0], f32({2, 1}, {-1, 1}));
}

TEST(NnNorm, RmsNorm) {
  auto out = run_op({.op = "RMSNormalization", .inputs = {f32({1, 2}, {3, 4}), f32({2}, {1, 2})},
                     .attrs = {{"epsilon", Attribute::of_float(0)}}, .opset = 23});
  expect_near(out[0], f32({1, 2}, {0.84852814f, 2.2627417f}));
}

TEST(NnNorm, LrnAcrossChannels) {
  auto out = run_op({.op = "LRN", .inputs = {f32({1, 3, 1, 1}, {1, 2, 3})},
                     .attrs = {{"size", Attribute::of_int(3)}, {"alpha", Attribute::of_float(3)},
                               {"beta", Attribute::of_float(1)}, {"bias", Attribute::of_float(1)}}});
  expect_near(out[0], f32({1, 3, 1, 1}, {1.0f / 6, 2.0f / 15, 3.0f / 14}));
}

TEST(NnNorm, MvnAndLpNormalization) {
  auto mvn = run_op({.op = "MeanVarianceNormalization", .inputs = {f32({1, 2}, {1, 3})},
                     .attrs = {{"axes", Attribute::of_ints({1})}}});
  expect_near(mvn[0], f32({1, 2}, {-1, 1}));
  auto l2 = run_op({.op = "LpNormalization", .inputs = {f32({2, 2}, {3, 4, 0, 2})}});
  expect_near(l2[0], f32({2, 2}, {0.6f, 0.8f, 0, 1}));
  auto l1 = run_op({.op = "LpNormalization", .inputs = {f32({2}, {3, -4})}, .attrs = {{"p", Attribute::of_int(1)}}});
  expect_near(l1[0], f32({2}, {3.0f / 7, -4.0f / 7}));
  auto zero = run_op({.op = "LpNormalization", .inputs = {f32({2}, {0, 0})}});
  expect_near(zero[0], f32({2}, {0, 0}));  // a zero vector stays zero
  EXPECT_THROW(run_op({.op = "LpNormalization", .inputs = {f32({2}, {3, 4})}, .attrs = {{"p", Attribute::of_int(3)}}}),
               Error);
}

TEST(NnNorm, RejectsIntegerInput) {
  EXPECT_THROW(run_op({.op = "InstanceNormalization",
                       .inputs = {i64({1, 1, 2}, {1, 2}), i64({1}, {1}), i64({1}, {0})}}),
               Error);
}

TEST(NnNorm, LayerNormInfersStatisticShapes) {
  auto t = infer_types("LayerNormalization", {{DType::F16, {-1, 5, 6}}, {DType::F16, {6}}},
                       {{"axis", Attribute::of_int(-1)}}, 3);
  EXPECT_EQ(t[0].to_string(), TensorType({DType::F16, {-1, 5, 6}}).to_string());
  EXPECT_EQ(t[1].to_string(), TensorType({DType::F32, {-1, 5, 1}}).to_string());  // stash type float
  EXPECT_EQ(t[2].to_string(), TensorType({DType::F32, {-1, 5, 1}}).to_string());
}

}  // namespace tessera::testing
