// Attention and RotaryEmbedding on hand-computed cases.
#include <cmath>

#include "ops/op_test_util.h"
#include "support/error.h"

namespace tessera::testing {

namespace {
const float kLn3 = std::log(3.0f);
Attribute I(int64_t v) { return Attribute::of_int(v); }
Tensor b8(Dims d, std::vector<bool> v) { return Tensor::from<bool>(std::move(d), v); }
}  // namespace

TEST(Attention, SoftmaxWeightsValues) {
  // Scores (0, ln 3) -> probabilities (1/4, 3/4).
  auto out = run_op({.op = "Attention",
                     .inputs = {f32({1, 1, 1, 1}, {1}), f32({1, 1, 2, 1}, {0, kLn3}), f32({1, 1, 2, 1}, {4, 8})},
                     .attrs = {{"scale", Attribute::of_float(1)}},
                     .num_outputs = 4,
                     .opset = 23});
  expect_near(out[0], f32({1, 1, 1, 1}, {7}));
  expect_near(out[1], f32({1, 1, 2, 1}, {0, kLn3}));
  expect_near(out[3], f32({1, 1, 1, 2}, {0, kLn3}));
}

TEST(Attention, DefaultScaleIsInverseSqrtHeadSize) {
  // Head size 4, q = k1 = (1,1,1,1): score 4 / 2 = 2 vs 0.
  auto out = run_op({.op = "Attention",
                     .inputs = {f32({1, 1, 1, 4}, {1, 1, 1, 1}), f32({1, 1, 2, 4}, {0, 0, 0, 0, 1, 1, 1, 1}),
                                f32({1, 1, 2, 1}, {0, 1})},
                     .num_outputs = 1,
                     .opset = 23});
  double p = std::exp(2.0) / (1 + std::exp(2.0));
  expect_near(out[0], f32({1, 1, 1, 1}, {static_cast<float>(p)}));
}

TEST(Attention, CausalMask) {
  auto out = run_op({.op = "Attention",
                     .inputs = {f32({1, 1, 2, 1}, {1, 1}), f32({1, 1, 2, 1}, {0, 0}), f32({1, 1, 2, 1}, {2, 6})},
                     .attrs = {{"is_causal", I(1)}},
                     .opset = 23});
  expect_near(out[0], f32({1, 1, 2, 1}, {2, 4}));
}

TEST(Attention, BoolMaskBroadcastsAndFullyMaskedRowIsZero) {
  auto run = [](Tensor mask) {
    return run_op({.op = "Attention",
                   .inputs = {f32({1, 1, 2, 1}, {1, 1}), f32({1, 1, 2, 1}, {0, 0}), f32({1, 1, 2, 1}, {2, 6}), mask},
                   .opset = 23})[0];
  };
  expect_near(run(b8({1, 2}, {true, false})), f32({1, 1, 2, 1}, {2, 2}));
  expect_near(run(b8({2, 2}, {false, false, true, true})), f32({1, 1, 2, 1}, {0, 4}));
  // A float mask is added to the scores.
  expect_near(run(f32({2, 2}, {0, kLn3, -INFINITY, 0})), f32({1, 1, 2, 1}, {5, 6}));
}

TEST(Attention, ThreeDInputsSplitHeads) {
  // Head 0 scores (0, 0); head 1 scores (0, ln 3).
  auto out = run_op({.op = "Attention",
                     .inputs = {f32({1, 1, 2}, {1, 1}), f32({1, 2, 2}, {0, 0, 0, kLn3}), f32({1, 2, 2}, {2, 4, 6, 8})},
                     .attrs = {{"q_num_heads", I(2)}, {"kv_num_heads", I(2)}, {"scale", Attribute::of_float(1)}},
                     .opset = 23});
  expect_near(out[0], f32({1, 1, 2}, {4, 7}));
}

TEST(Attention, GroupedQueryAttentionSharesKvHead) {
  auto out = run_op({.op = "Attention",
                     .inputs = {f32({1, 2, 1, 1}, {1, 2}), f32({1, 1, 2, 1}, {0, kLn3}), f32({1, 1, 2, 1}, {0, 4})},
                     .attrs = {{"scale", Attribute::of_float(1)}},
                     .opset = 23});
  expect_near(out[0], f32({1, 2, 1, 1}, {3, 3.6f}));
}

TEST(Attention, PastKeyValueAreConcatenated) {
  auto out = run_op({.op = "Attention",
                     .inputs = {f32({1, 1, 1, 1}, {1}), f32({1, 1, 1, 1}, {kLn3}), f32({1, 1, 1, 1}, {4}), Tensor(),
                                f32({1, 1, 1, 1}, {0}), f32({1, 1, 1, 1}, {0})},
                     .attrs = {{"scale", Attribute::of_float(1)}},
                     .num_outputs = 3,
                     .opset = 23});
  expect_near(out[0], f32({1, 1, 1, 1}, {3}));
  expect_near(out[1], f32({1, 1, 2, 1}, {0, kLn3}));
  expect_near(out[2], f32({1, 1, 2, 1}, {0, 4}));
}

TEST(Attention, SoftcapAndSoftmaxOutputMode) {
  // softcap 1: scores (0, 100) -> (0, tanh 100 = 1).
  auto out = run_op({.op = "Attention",
                     .inputs = {f32({1, 1, 1, 1}, {1}), f32({1, 1, 2, 1}, {0, 100}), f32({1, 1, 2, 1}, {0, 1})},
                     .attrs = {{"scale", Attribute::of_float(1)}, {"softcap", Attribute::of_float(1)},
                               {"qk_matmul_output_mode", I(3)}},
                     .num_outputs = 4,
                     .opset = 23});
  float p = static_cast<float>(std::exp(1.0) / (1 + std::exp(1.0)));
  expect_near(out[0], f32({1, 1, 1, 1}, {p}));
  expect_near(out[3], f32({1, 1, 1, 2}, {1 - p, p}));
}

TEST(Attention, QkOutputModesBeforeAndAfterSoftcapAndMask) {
  auto qk = [](int64_t mode) {
    return run_op({.op = "Attention",
                   .inputs = {f32({1, 1, 1, 1}, {1}), f32({1, 1, 2, 1}, {0, 100}), f32({1, 1, 2, 1}, {0, 1}),
                              f32({1, 2}, {-1, 0})},
                   .attrs = {{"scale", Attribute::of_float(1)}, {"softcap", Attribute::of_float(1)},
                             {"qk_matmul_output_mode", I(mode)}},
                   .num_outputs = 4,
                   .opset = 23})[3];
  };
  float t = std::tanh(100.0f);
  expect_near(qk(0), f32({1, 1, 1, 2}, {0, 100}));
  expect_near(qk(1), f32({1, 1, 1, 2}, {0, t}));
  expect_near(qk(2), f32({1, 1, 1, 2}, {-1, t}));
}

TEST(Attention, InfersShapes) {
  auto t = infer_op({.op = "Attention",
                     .inputs = {f32({2, 3, 8}, std::vector<float>(48)), f32({2, 5, 4}, std::vector<float>(40)),
                                f32({2, 5, 6}, std::vector<float>(60))},
                     .attrs = {{"q_num_heads", I(2)}, {"kv_num_heads", I(1)}},
                     .num_outputs = 4,
                     .opset = 23});
  EXPECT_EQ(t[0].to_string(), "f32[2x3x12]");
  EXPECT_EQ(t[1].to_string(), "f32[2x1x5x4]");
  EXPECT_EQ(t[2].to_string(), "f32[2x1x5x6]");
  EXPECT_EQ(t[3].to_string(), "f32[2x2x3x5]");
}

TEST(Attention, ThreeDNeedsHeadCounts) {
  EXPECT_THROW(run_op({.op = "Attention",
                       .inputs = {f32({1, 1, 2}, {1, 1}), f32({1, 1, 2}, {1, 1}), f32({1, 1, 2}, {1, 1})},
                       .opset = 23}),
               tessera::Error);
}

TEST(RotaryEmbedding, RotatesHalvesWithCacheRows) {
  // Pair k = 0 rotated by 90 degrees, pair k = 1 unchanged.
  Tensor x = f32({1, 1, 1, 4}, {1, 2, 3, 4});
  Tensor cosc = f32({1, 1, 2}, {0, 1}), sinc = f32({1, 1, 2}, {1, 0});
  auto out = run_op({.op = "RotaryEmbedding", .inputs = {x, cosc, sinc}, .opset = 23});
  expect_near(out[0], f32({1, 1, 1, 4}, {-3, 2, 1, 4}));
  out = run_op({.op = "RotaryEmbedding", .inputs = {x, cosc, sinc}, .attrs = {{"interleaved", I(1)}}, .opset = 23});
  expect_near(out[0], f32({1, 1, 1, 4}, {-2, 1, 3, 4}));
}

TEST(RotaryEmbedding, PositionIdsAndPartialRotation) {
  Tensor x = f32({1, 1, 4}, {1, 2, 3, 4});  // 3-D: one head of size 4
  auto out = run_op({.op = "RotaryEmbedding",
                     .inputs = {x, f32({2, 1}, {1, 0}), f32({2, 1}, {0, 1}), i64({1, 1}, {1})},
                     .attrs = {{"num_heads", I(1)}, {"rotary_embedding_dim", I(2)}},
                     .opset = 23});
  expect_near(out[0], f32({1, 1, 4}, {-2, 1, 3, 4}));
}

TEST(RotaryEmbedding, RejectsOutOfRangePosition) {
  EXPECT_THROW(run_op({.op = "RotaryEmbedding",
                       .inputs = {f32({1, 1, 1, 2}, {1, 2}), f32({1, 1}, {1}), f32({1, 1}, {0}), i64({1, 1}, {5})},
                       .opset = 23}),
               tessera::Error);
}

}  // namespace tessera::testing
